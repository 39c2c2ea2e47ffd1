export default "B";
